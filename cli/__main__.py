from cz.app import main

main()
